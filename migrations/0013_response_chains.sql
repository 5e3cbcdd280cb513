-- A stored response keeps its own turn once and names its predecessor: a chain of N turns is N rows, read with one
-- recursive query (PgResponseStore.chain), instead of each response copying the whole conversation before it.
--   turn_items  the turn's own input items, with ids (rows written before this migration have NULL here and the whole
--               conversation in input_items; a chain read stops at such a row and takes its input_items whole)
--   hold_id     the hold the response was billed under (NULL for one not billed yet: a queued background response)
ALTER TABLE responses ADD COLUMN turn_items jsonb;
ALTER TABLE responses ALTER COLUMN input_items DROP NOT NULL;
ALTER TABLE responses ADD COLUMN hold_id uuid;

-- The item index no longer copies items: `source` and `position` say where in its response the item is (`input`:
-- turn_items, `output`: the Response object's output). Rows written before this migration keep their copy in `item`.
ALTER TABLE response_items ALTER COLUMN item DROP NOT NULL;
ALTER TABLE response_items ADD COLUMN source text;
ALTER TABLE response_items ADD COLUMN position integer;
