-- The assistant's tools in a project thread (jobs/tasks/generate-reply.ts): read a
-- file of the thread's project, and search the project's indexed files (with the
-- query's vector when the worker could compute one: args.queryEmbedding). Owner-only,
-- like the rest of a chat turn. Every call checks that the answer is still being
-- written and that the thread's owner can still read the project, so a revoked grant
-- ends what the assistant may read mid-turn.

create or replace function app.worker_thread_tool(organization uuid, message uuid, tool text, args jsonb) returns jsonb
language plpgsql as $$
declare
  reply app.thread_messages;
  th app.threads;
  d app.documents;
  extracted text;
  read_limit bigint := app.limit('agent.fileReadMaxBytes');
  wanted integer;
begin
  select * into reply from app.thread_messages
   where organization_id = organization and id = message and role = 'assistant' and status = 'streaming';
  if reply.id is null then
    return jsonb_build_object('stopped', true);
  end if;
  select * into th from app.threads where organization_id = organization and id = reply.thread_id;
  if th.project_id is null then
    return jsonb_build_object('error', 'this thread belongs to no project');
  end if;
  if app.member_project_access(organization, th.owner_id, th.project_id) is null then
    return jsonb_build_object('error', 'the project is no longer yours to read');
  end if;

  case tool
  when 'files.read' then
    if coalesce(args->>'fileId', '') = '' then
      return jsonb_build_object('result', jsonb_build_object('files', coalesce((
        select jsonb_agg(jsonb_build_object('fileId', x.id, 'name', x.file_name, 'mimeType', x.mime_type,
                                            'sizeBytes', x.size_bytes, 'indexing', x.indexing_status)
                         order by x.created_at desc, x.id)
          from (select * from app.documents k
                 where k.organization_id = organization and k.project_id = th.project_id and k.kind = 'file'
                   and k.trashed_at is null
                 order by k.created_at desc, k.id limit 200) x), '[]')));
    end if;
    select * into d from app.documents
     where organization_id = organization and project_id = th.project_id and id = app.as_uuid(args->>'fileId')
       and kind = 'file' and trashed_at is null;
    if d.id is null then
      return jsonb_build_object('error', 'no such file in the project');
    end if;
    extracted := (select i.content from app.index_files i where i.document_id = d.id and i.status = 'completed');
    if extracted is not null then
      return jsonb_build_object('result', jsonb_build_object('fileId', d.id, 'name', d.file_name, 'mimeType', d.mime_type,
        'text', app.utf8_left(extracted, read_limit), 'truncated', octet_length(extracted) > read_limit));
    end if;
    -- Not indexed (skipped by default): a plain-text file up to the read limit is read
    -- from the object store as it is.
    if coalesce((select t.plain_text from app.file_types t where t.extension = app.file_extension(d.file_name)), false)
       and d.object_key is not null then
      if d.size_bytes > read_limit then
        return jsonb_build_object('error', format('the file %s is over %s bytes; only indexed files that large are read',
                                                  d.file_name, read_limit));
      end if;
      return jsonb_build_object('fetch', jsonb_build_object('fileId', d.id, 'name', d.file_name, 'mimeType', d.mime_type,
        'key', d.object_key, 'etag', d.object_etag));
    end if;
    return jsonb_build_object('error', format('the file %s (%s) is not plain text and is not indexed; ask for retry-indexing',
                                              d.file_name, d.mime_type));
  when 'files.search' then
    if coalesce(btrim(args->>'query'), '') = '' then
      return jsonb_build_object('error', 'query must not be empty');
    end if;
    wanted := least(greatest(coalesce((args->>'topK')::integer, 5), 1), 20);
    return jsonb_build_object('result', jsonb_build_object('results', coalesce((
      select jsonb_agg(jsonb_build_object('fileId', s.document_id, 'name', f.file_name, 'page', s.page,
                                          'heading', s.heading, 'text', s.content, 'score', round(s.score::numeric, 4))
                       order by s.score desc)
        from app.search_chunks(left(args->>'query', 2000),
               array(select 'document:' || k.id from app.documents k
                      where k.organization_id = organization and k.project_id = th.project_id and k.kind = 'file'
                        and k.trashed_at is null),
               wanted, 0,
               case when jsonb_typeof(args->'queryEmbedding') = 'array'
                    then array(select jsonb_array_elements_text(args->'queryEmbedding')::real) end,
               'english', organization) s
        join app.documents f on f.id = s.document_id), '[]')));
  else
    return jsonb_build_object('error', format('there is no tool %s', tool));
  end case;
exception when invalid_text_representation or numeric_value_out_of_range then
  return jsonb_build_object('error', 'the arguments do not fit the tool');
end $$;
