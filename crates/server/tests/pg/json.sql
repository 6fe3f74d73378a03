-- JSON operators on json and jsonb columns and literals.
CREATE TABLE doc (id integer PRIMARY KEY, j json, b jsonb);
INSERT INTO doc VALUES (1, '{"a": {"x":  1}, "t": "hi", "arr": [1,2,3], "n": null}', '{"a": {"x":  1}, "t": "hi", "arr": [1,2,3], "n": null}');
INSERT INTO doc VALUES (2, '{"t": "bye", "arr": [], "tags": ["red", "blue"]}', '{"t": "bye", "arr": [], "tags": ["red", "blue"]}');
INSERT INTO doc VALUES (3, NULL, NULL);
SELECT id, j -> 'a' AS ja, b -> 'a' AS ba, j ->> 't' AS jt, b ->> 't' AS bt FROM doc ORDER BY id;
SELECT id, b -> 'arr' -> 1 AS second, b -> 'arr' ->> -1 AS last, j -> 'arr' -> 0 AS first FROM doc ORDER BY id;
SELECT id, b #> '{a,x}' AS path, b #>> '{arr,2}' AS path_text, j #> '{a}' AS jpath, b #>> '{tags,0}' AS tag FROM doc ORDER BY id;
SELECT id, b -> 'n' AS json_null, b ->> 'n' IS NULL AS sql_null, b -> 'missing' IS NULL AS missing FROM doc ORDER BY id;
SELECT id FROM doc WHERE b ->> 't' = 'hi';
SELECT id FROM doc WHERE (b -> 'a' ->> 'x')::integer = 1;
SELECT id FROM doc WHERE b @> '{"tags": ["blue"]}' ORDER BY id;
SELECT id FROM doc WHERE b @> '{"a": {"x": 1}}' ORDER BY id;
SELECT id FROM doc WHERE '{"t": "bye"}' <@ b ORDER BY id;
SELECT '{"a": [1, 2]}'::jsonb -> 'a' AS arr, '[1, 2, 3]'::jsonb -> 5 AS outside, '{"a": 1}'::jsonb -> 0 AS wrong_step;
SELECT '[1, [2, 3]]'::jsonb @> '[[3]]' AS nested, '[1, [2, 3]]'::jsonb @> '[3]' AS flat, '["a", "b"]'::jsonb @> '"a"' AS scalar;
SELECT '{"a": 1}'::jsonb @> '{"a": 1.0}' AS numeric_equal, '{"a": 1}'::jsonb @> '{"a": 2}' AS different;
SELECT json_build_object('k', b -> 'a') AS embedded FROM doc WHERE id = 1;
