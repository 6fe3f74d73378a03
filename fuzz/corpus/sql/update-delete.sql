CREATE TABLE t(a INT, b TEXT);
INSERT INTO t VALUES (1,'a'),(2,'b'),(3,'c');
UPDATE t SET b = b || '!' WHERE a % 2 = 1;
DELETE FROM t WHERE a = 2;
SELECT * FROM t;