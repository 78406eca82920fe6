-- Products (docs/records.md): what the organization sells, by an optional natural key
-- (externalId). Every member reads them; Editors and above write them (the policies
-- of db/policies/products.sql decide, app.products_writer only names the refusal).
-- Field checks share the helpers of db/functions/0140_contacts.sql.

create or replace function app.products_writer() returns void language plpgsql stable as $$
begin
  if not app.has_editing_role() then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Changing the organization''s products needs the Editor role or above.');
  end if;
end $$;

create or replace function app.product_json(p app.products) returns jsonb language sql stable as $$
  select jsonb_build_object('id', p.id, 'externalId', p.external_id, 'name', p.name, 'description', p.description,
    'sku', p.sku, 'price', p.price, 'currency', p.currency, 'attributes', p.attributes,
    'createdAt', app.ms(p.created_at), 'updatedAt', app.ms(p.updated_at))
$$;

-- Every problem of a product's fields as sent (a create or a change), each with its
-- path; '[]' when there is none. `lim` is app.contact_limits().
create or replace function app.product_issues(r jsonb, lim jsonb) returns jsonb language sql stable as $$
  select case when jsonb_typeof(r) is distinct from 'object'
    then jsonb_build_array(jsonb_build_object('path', '', 'message', 'must be an object'))
    else to_jsonb(array_remove(array[
      app.record_unknown_key(r, array['externalId', 'name', 'description', 'sku', 'price', 'currency', 'attributes']),
      app.record_text_issue(r, 'externalId', (lim->>'contact.externalIdMaxUnits')::numeric),
      case when jsonb_typeof(r->'name') = 'null' then jsonb_build_object('path', 'name', 'message', 'must not be null')
           else app.record_text_issue(r, 'name', (lim->>'product.nameMaxUnits')::numeric) end,
      case when jsonb_typeof(r->'description') not in ('string', 'null')
             then jsonb_build_object('path', 'description', 'message', 'must be a string or null')
           when app.utf16_length(r->>'description') > (lim->>'product.descriptionMaxUnits')::numeric
             then jsonb_build_object('path', 'description', 'message',
                    format('at most %s UTF-16 code units', lim->>'product.descriptionMaxUnits')) end,
      app.record_text_issue(r, 'sku', (lim->>'product.skuMaxUnits')::numeric),
      case when jsonb_typeof(r->'price') not in ('number', 'null')
             then jsonb_build_object('path', 'price', 'message', 'must be a number or null')
           when (r->>'price')::numeric < 0 or (r->>'price')::numeric > (lim->>'product.priceMax')::numeric
             then jsonb_build_object('path', 'price', 'message', format('must be from 0 to %s', lim->>'product.priceMax')) end,
      case when jsonb_typeof(r->'currency') not in ('string', 'null') or (r->>'currency') !~ '^[A-Z]{3}$'
             then jsonb_build_object('path', 'currency', 'message', 'must be an ISO 4217 code such as EUR, or null') end,
      app.record_attributes_issue(r, (lim->>'contact.attributesMaxBytes')::numeric)
    ], null)) end
$$;

-- The product a record makes of p (null: a new product): the fields sent replace the
-- stored ones (null clears), the omitted ones are kept; attributes are replaced
-- (PATCH) or merged key by key (a create by natural key).
create or replace function app.product_merge(p app.products, r jsonb, replace_attributes boolean) returns app.products
language plpgsql immutable as $$
begin
  if r ? 'externalId' then p.external_id := app.record_key(r->>'externalId'); end if;
  if r ? 'name' then p.name := app.record_trim(r->>'name'); end if;
  if r ? 'description' then p.description := r->>'description'; end if;
  if r ? 'sku' then p.sku := app.record_trim(r->>'sku'); end if;
  if r ? 'price' then p.price := (r->>'price')::numeric; end if;
  if r ? 'currency' then p.currency := r->>'currency'; end if;
  if r ? 'attributes' and not replace_attributes then
    p.attributes := coalesce(p.attributes, '{}') || (r->'attributes');
  elsif r ? 'attributes' then
    p.attributes := r->'attributes';
  else
    p.attributes := coalesce(p.attributes, '{}');
  end if;
  return p;
end $$;

-- What the whole product must hold once the fields sent are applied.
create or replace function app.product_whole_issues(p app.products) returns jsonb language sql immutable as $$
  select to_jsonb(array_remove(array[
    case when p.name is null then jsonb_build_object('path', 'name', 'message', 'is required') end,
    case when p.price is not null and p.currency is null
         then jsonb_build_object('path', 'currency', 'message', 'is required with a price') end
  ], null))
$$;

create or replace function app.product_refuse(issues jsonb) returns void language plpgsql as $$
begin
  if jsonb_array_length(issues) > 0 then
    perform app.fail('INVALID_BODY', 400, 'The product is not valid: ' || (issues->0->>'path') || ' ' || (issues->0->>'message'),
      jsonb_build_object('issues', issues));
  end if;
end $$;

-- A product of the caller's organization, or 404 PRODUCT_NOT_FOUND alike for ids that
-- are missing or another organization's.
create or replace function app.product(product text) returns app.products language plpgsql stable as $$
declare
  p app.products;
begin
  select * into p from app.products where organization_id = app.org_id() and id = app.as_uuid(product);
  if p.id is null then
    perform app.fail('PRODUCT_NOT_FOUND', 404, 'Product not found.');
  end if;
  return p;
end $$;

create or replace function api.products_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  page_size integer := app.page_size(args->>'limit', 'page.products.maxSize');
  filters jsonb := jsonb_strip_nulls(jsonb_build_object('externalId', app.record_key(args->>'externalId')));
  page_start record := app.keyset_resume(args->>'cursor', 'products', filters);
  rows jsonb;
  positions jsonb[];
begin
  -- Newest change first: (updated_at, id) descending; the cursor carries both.
  select jsonb_agg(app.product_json(p) order by p.updated_at desc, p.id desc),
         array_agg(app.keyset_position(p.updated_at, p.id) order by p.updated_at desc, p.id desc)
    into rows, positions
    from (select * from app.products p
           where p.organization_id = app.org_id()
             and (p.updated_at, p.id) < (page_start.after_created, page_start.after_id)
             and (filters->>'externalId' is null or p.external_id = filters->>'externalId')
           order by p.updated_at desc, p.id desc
           limit page_size + 1) p;
  return app.keyset_page('page', 'products', filters, page_size, rows, positions) - 'cursor';
end $$;

-- POST /products: a create, or with an externalId already held, an update of that
-- product (created: false); a repeat that changes nothing writes nothing.
create or replace function api.product_create(args jsonb) returns jsonb language plpgsql as $$
declare
  ext text := app.record_key(args->>'externalId');
  existing app.products;
  p app.products;
  stamp timestamptz := app.now();
begin
  perform app.products_writer();
  perform app.product_refuse(app.product_issues(args, app.contact_limits()));
  if ext is not null then
    select * into existing from app.products where organization_id = app.org_id() and external_id = ext for update;
  end if;
  if existing.id is null then
    p := app.product_merge(null, args, false);
    perform app.product_refuse(app.product_whole_issues(p));
    insert into app.products (organization_id, external_id, name, description, sku, price, currency, attributes,
                              created_by, created_at, updated_at)
    values (app.org_id(), p.external_id, p.name, p.description, p.sku, p.price, p.currency, p.attributes,
            app.user_id(), stamp, stamp)
    on conflict (organization_id, external_id) do nothing
    returning * into p;
    if p.id is not null then
      return jsonb_build_object('product', app.product_json(p), 'created', true);
    end if;
    -- The same key was created concurrently: this create is a repeat of it.
    select * into existing from app.products where organization_id = app.org_id() and external_id = ext for update;
  end if;
  p := app.product_merge(existing, args, false);
  perform app.product_refuse(app.product_whole_issues(p));
  if row(p.*) is distinct from row(existing.*) then
    update app.products
       set name = p.name, description = p.description, sku = p.sku, price = p.price, currency = p.currency,
           attributes = p.attributes, updated_at = stamp
     where organization_id = existing.organization_id and id = existing.id
    returning * into p;
  end if;
  return jsonb_build_object('product', app.product_json(p), 'created', false);
end $$;

create or replace function api.product_get(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('product', app.product_json(app.product(args->>'id')));
end $$;

-- PATCH: the fields sent replace the stored ones (null clears; attributes are
-- replaced whole). A new externalId another product holds answers 409.
create or replace function api.product_update(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.products := app.product(args->>'id');
  body jsonb := args - 'id';
  changed app.products;
  holder uuid;
begin
  perform app.products_writer();
  perform app.product_refuse(app.product_issues(body, app.contact_limits()));
  select * into p from app.products where organization_id = p.organization_id and id = p.id for update;
  changed := app.product_merge(p, body, true);
  perform app.product_refuse(app.product_whole_issues(changed));
  if row(changed.*) is not distinct from row(p.*) then
    return jsonb_build_object('product', app.product_json(p));
  end if;
  if changed.external_id is distinct from p.external_id and changed.external_id is not null then
    select id into holder from app.products where organization_id = p.organization_id and external_id = changed.external_id;
    if holder is not null then
      perform app.fail('PRODUCT_DUPLICATE_EXTERNAL_ID', 409, 'Another product holds that externalId.',
        jsonb_build_object('externalId', changed.external_id, 'productId', holder));
    end if;
  end if;
  begin
    update app.products
       set external_id = changed.external_id, name = changed.name, description = changed.description, sku = changed.sku,
           price = changed.price, currency = changed.currency, attributes = changed.attributes, updated_at = app.now()
     where organization_id = p.organization_id and id = p.id
    returning * into changed;
  exception when unique_violation then
    perform app.fail('PRODUCT_DUPLICATE_EXTERNAL_ID', 409, 'Another product holds that externalId.',
      jsonb_build_object('externalId', changed.external_id));
  end;
  return jsonb_build_object('product', app.product_json(changed));
end $$;

create or replace function api.product_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.products := app.product(args->>'id');
begin
  perform app.products_writer();
  delete from app.products where organization_id = p.organization_id and id = p.id;
  return null;
end $$;

grant execute on function app.products_writer, app.product_json, app.product_issues, app.product_merge,
  app.product_whole_issues, app.product_refuse, app.product, api.products_list, api.product_create, api.product_get,
  api.product_update, api.product_delete to api;
