CREATE TABLE t(g TEXT, n INT);
INSERT INTO t VALUES ('a',1),('a',2),('b',5),(NULL,7);
SELECT g, count(*), sum(n), avg(n), min(n), max(n), group_concat(n) FROM t GROUP BY g HAVING count(*) > 0 ORDER BY 1;