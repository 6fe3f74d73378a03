-- GROUPING SETS, ROLLUP, CUBE, grouping() and the ordered-set aggregates, checked against PostgreSQL 15.
CREATE TABLE sales(region TEXT, product TEXT, year INTEGER, amount INTEGER);
INSERT INTO sales VALUES ('east', 'apple', 2023, 10), ('east', 'pear', 2023, 20), ('east', 'apple', 2024, 30), ('west', 'apple', 2023, 40), ('west', 'pear', 2024, 50), ('west', NULL, 2024, 5);
SELECT region, product, sum(amount) FROM sales GROUP BY ROLLUP (region, product) ORDER BY region, product, 3;
SELECT region, product, sum(amount), grouping(region, product) FROM sales GROUP BY CUBE (region, product) ORDER BY 4, region, product;
SELECT region, year, count(*) FROM sales GROUP BY GROUPING SETS ((region), (year), ()) ORDER BY region, year;
SELECT region, product, year, sum(amount) FROM sales GROUP BY region, ROLLUP (product, year) ORDER BY 1, 2, 3;
SELECT grouping(region), region, sum(amount) FROM sales GROUP BY ROLLUP (region) HAVING sum(amount) > 60 ORDER BY 1, 2;
SELECT sum(amount) FROM sales GROUP BY GROUPING SETS (());
SELECT region, sum(amount) FROM sales WHERE amount > 1000 GROUP BY ROLLUP (region);
SELECT grouping(amount) FROM sales GROUP BY region;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount), percentile_disc(0.5) WITHIN GROUP (ORDER BY amount) FROM sales;
SELECT region, percentile_cont(0.25) WITHIN GROUP (ORDER BY amount), percentile_disc(0.9) WITHIN GROUP (ORDER BY amount DESC), mode() WITHIN GROUP (ORDER BY product) FROM sales GROUP BY region ORDER BY region;
SELECT percentile_cont(0) WITHIN GROUP (ORDER BY amount), percentile_cont(1) WITHIN GROUP (ORDER BY amount), percentile_disc(0) WITHIN GROUP (ORDER BY year) FROM sales;
SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY amount) FROM sales;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) FROM sales WHERE amount > 1000;
SELECT mode() WITHIN GROUP (ORDER BY year) FROM sales;
SELECT percentile_cont(0.5) FROM sales;
