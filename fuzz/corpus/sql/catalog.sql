CREATE TABLE t(a INT);
SELECT relname FROM pg_catalog.pg_class WHERE relname = 't';
SELECT table_name, column_name FROM information_schema.columns;
SELECT 't'::regclass, to_regtype('integer');
SHOW search_path;
SET search_path TO public;