SELECT 1 + 2 * 3 - 4 / 2 % 3, -5, +5, ~5, 1 << 3, 17 >> 2, 5 & 3, 5 | 3;
SELECT 'a' || 'b', 'abc' LIKE 'a%', 'abc' GLOB 'a*', NULL IS NULL, 1 IS NOT 2, 3 BETWEEN 1 AND 5;
SELECT CASE WHEN 1 > 2 THEN 'x' WHEN 2 > 1 THEN 'y' ELSE 'z' END, coalesce(NULL, 2), nullif(1, 1), iif(1, 2, 3);