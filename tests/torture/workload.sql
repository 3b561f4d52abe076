-- The sqlite3 shell's workload of the torture tier (tests/torture/torture.py):
-- a little of everything libsqlite3 does, with an output that does not
-- change from run to run.
PRAGMA journal_mode = WAL;
PRAGMA cache_size = 200;
CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, joined INTEGER);
CREATE TABLE item(id INTEGER PRIMARY KEY, label TEXT UNIQUE, price REAL);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER REFERENCES customer(id),
                    item INTEGER REFERENCES item(id), qty INTEGER, note TEXT);
CREATE TABLE audit(n INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER orders_audit AFTER INSERT ON orders WHEN new.qty > 95
BEGIN INSERT INTO audit(what) VALUES ('big order ' || new.id); END;

BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
INSERT INTO customer SELECT i, 'customer-' || printf('%05d', (i * 7919) % 3001),
       'city-' || (i % 37), 1600000000 + i * 3607 FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
INSERT INTO item SELECT i, 'item-' || i, round((i * 37 % 1000) / 7.0, 2) FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
INSERT INTO orders SELECT i, 1 + (i * 104729) % 3000, 1 + (i * 7) % 500, 1 + (i * 31) % 100,
       CASE WHEN i % 10 = 0 THEN json_object('gift', i % 3 = 0, 'tags', json_array('a', i % 5))
            ELSE NULL END FROM n;
COMMIT;

CREATE INDEX orders_by_customer ON orders(customer, item);
CREATE INDEX customer_by_city ON customer(city, name);
ANALYZE;

SELECT 'counts', (SELECT count(*) FROM customer), (SELECT count(*) FROM item),
       (SELECT count(*) FROM orders), (SELECT count(*) FROM audit);

-- joins, grouping, ordering
SELECT c.city, count(*) AS n, sum(o.qty * i.price) AS total
FROM orders o JOIN customer c ON c.id = o.customer JOIN item i ON i.id = o.item
GROUP BY c.city ORDER BY total DESC, c.city LIMIT 10;

-- window functions
SELECT city, name, rank FROM (
  SELECT c.city, c.name, rank() OVER (PARTITION BY c.city ORDER BY sum(o.qty) DESC, c.name) AS rank
  FROM customer c JOIN orders o ON o.customer = c.id GROUP BY c.id)
WHERE rank <= 2 ORDER BY city, rank LIMIT 20;

SELECT id, qty, sum(qty) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS moving,
       lag(qty, 2) OVER (ORDER BY id) AS lagged
FROM orders WHERE id BETWEEN 1000 AND 1015;

-- JSON
SELECT json_extract(note, '$.gift') AS gift, json_extract(note, '$.tags[1]') AS tag, count(*)
FROM orders WHERE note IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2;
SELECT json_group_array(id) FROM (SELECT id FROM item WHERE price > 140 ORDER BY id);

-- strings, dates, math
SELECT upper(substr(name, 10)), length(name), instr(name, '0'), replace(city, 'city', 'town'),
       datetime(joined, 'unixepoch'), strftime('%Y-%W', joined, 'unixepoch')
FROM customer WHERE id % 500 = 0 ORDER BY id;
SELECT printf('%.3f %e %10s|%-10s|%x', price, price * 1e10, label, label, id) FROM item
WHERE id IN (1, 77, 499);
SELECT group_concat(DISTINCT city) FROM (SELECT city FROM customer ORDER BY city LIMIT 50);

-- subqueries, EXISTS, set operations
SELECT count(*) FROM customer c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer = c.id);
SELECT item FROM orders WHERE qty = 100 INTERSECT SELECT id FROM item WHERE price > 100 ORDER BY 1 LIMIT 10;
SELECT id FROM item WHERE id < 20 EXCEPT SELECT item FROM orders WHERE customer < 50 ORDER BY 1;

-- updates, deletes, savepoints, upsert
BEGIN;
UPDATE item SET price = price * 1.1 WHERE id % 3 = 0;
SAVEPOINT s1;
DELETE FROM orders WHERE qty < 10;
SELECT 'after delete', count(*) FROM orders;
ROLLBACK TO s1;
RELEASE s1;
INSERT INTO item(id, label, price) VALUES (7, 'seven', 7.0)
  ON CONFLICT(id) DO UPDATE SET label = excluded.label, price = excluded.price;
COMMIT;
SELECT 'after rollback', count(*), sum(qty) FROM orders;
SELECT id, label, price FROM item WHERE id IN (3, 6, 7);

-- full-text search
CREATE VIRTUAL TABLE doc USING fts5(body);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
INSERT INTO doc SELECT 'word' || (i % 97) || ' other' || (i % 13) || ' common text ' || i FROM n;
SELECT count(*) FROM doc WHERE doc MATCH 'word5 AND other7';
SELECT rowid, snippet(doc, 0, '[', ']', '...', 4) FROM doc WHERE doc MATCH 'word42' ORDER BY rank, rowid LIMIT 3;

-- a view, a common table expression, a big sort
CREATE VIEW spend AS SELECT customer, sum(qty) AS q FROM orders GROUP BY customer;
WITH top AS (SELECT customer, q FROM spend ORDER BY q DESC, customer LIMIT 5)
SELECT c.name, top.q FROM top JOIN customer c ON c.id = top.customer ORDER BY top.q DESC, c.name;
SELECT sum(h) FROM (SELECT (id * 2654435761) % 1000003 AS h FROM orders ORDER BY note, qty DESC, id);

-- blobs, zeroblob, hex
CREATE TABLE blobs(b BLOB);
INSERT INTO blobs VALUES (zeroblob(100000)), (x'00ff00ff'), (x'');
SELECT length(b), hex(substr(b, 1, 4)) FROM blobs ORDER BY rowid;

PRAGMA wal_checkpoint(TRUNCATE);
VACUUM;
PRAGMA integrity_check;
PRAGMA foreign_key_check;
SELECT 'done';
