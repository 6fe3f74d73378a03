-- MERGE, checked against PostgreSQL 15.
CREATE TABLE stock(item TEXT PRIMARY KEY, qty INTEGER NOT NULL CHECK (qty >= 0), note TEXT DEFAULT 'new');
INSERT INTO stock VALUES ('apple', 10, 'old'), ('pear', 5, 'old'), ('plum', 1, 'old');
CREATE TABLE delivery(item TEXT, qty INTEGER);
INSERT INTO delivery VALUES ('apple', 5), ('kiwi', 7), ('plum', -1), ('fig', 0);
MERGE INTO stock s USING delivery d ON s.item = d.item WHEN MATCHED AND s.qty + d.qty = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET qty = s.qty + d.qty, note = 'topped up' WHEN NOT MATCHED AND d.qty > 0 THEN INSERT (item, qty) VALUES (d.item, d.qty);
SELECT item, qty, note FROM stock ORDER BY item;
MERGE INTO stock USING (SELECT 'pear' AS item, 2 AS qty) AS src ON stock.item = src.item WHEN MATCHED THEN UPDATE SET qty = stock.qty - src.qty;
SELECT item, qty FROM stock ORDER BY item;
MERGE INTO stock s USING delivery d ON true WHEN MATCHED THEN UPDATE SET qty = 1;
MERGE INTO stock s USING (VALUES ('pear', 100)) AS d(item, qty) ON s.item = d.item WHEN MATCHED THEN UPDATE SET qty = s.qty - d.qty;
MERGE INTO stock s USING (SELECT 'cherry' AS item) AS d ON s.item = d.item WHEN NOT MATCHED THEN INSERT VALUES (d.item, 3, 'picked');
MERGE INTO stock s USING (SELECT 'apple' AS item) AS d ON s.item = d.item WHEN NOT MATCHED THEN INSERT (item, qty) VALUES (d.item, 1);
SELECT item, qty, note FROM stock ORDER BY item;
MERGE INTO no_such_table s USING delivery d ON true WHEN MATCHED THEN DELETE;
MERGE INTO stock s USING delivery d ON s.item = d.item WHEN NOT MATCHED THEN INSERT (item, item) VALUES (d.item, d.item);
