-- URLs write each "/" of a name as "__"; a segment ending in "_" would make that
-- ambiguous ("a_/b" and "a/_b" both become "a___b"), so names never hold "_/".
alter table app.automations add constraint automations_name_url_safe check (position('_/' in name) = 0);
