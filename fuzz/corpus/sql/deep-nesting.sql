SELECT ((((((((((((((((((((1))))))))))))))))))));
SELECT -(-(-(-(-(-(-(-(1))))))));
SELECT (SELECT (SELECT (SELECT (SELECT 1))));
SELECT 1 WHERE 1 AND 1 AND 1 AND 1 AND 1 OR 0 OR 0;