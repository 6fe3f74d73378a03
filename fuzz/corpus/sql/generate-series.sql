SELECT count(*), sum(value) FROM generate_series(1, 1000);
SELECT * FROM generate_series(1, 10, 3);
SELECT unnest(ARRAY[1, 2, 3]);
SELECT ARRAY[1, 2][1], array_agg(x) FROM (SELECT 1 AS x UNION SELECT 2) AS s;