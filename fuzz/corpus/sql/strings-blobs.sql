SELECT x'00ff10', 'quote''s', "a" FROM (SELECT 1 AS a);
SELECT E'esc\n', $$dollar$$, 'a' COLLATE NOCASE = 'A', upper('ß'), length(x''), substr('abc', -2), substr('abc', 0, -1);