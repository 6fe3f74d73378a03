-- Regular expression functions, checked against PostgreSQL 15.
SELECT regexp_match('foobarbequebaz', '(bar)(beque)'), regexp_match('foobarbequebaz', 'barbeque'), regexp_match('abc', 'x');
SELECT regexp_match('ABC', 'b', 'i'), regexp_match('a-b', '(a)|(x)');
SELECT regexp_split_to_array('hello world  again', '\s+'), regexp_split_to_array('abc', ''), regexp_split_to_array('a,b', 'x');
SELECT regexp_count('ababab', 'ab'), regexp_count('ababab', 'ab', 2), regexp_count('AbAB', 'ab', 1, 'i');
SELECT regexp_like('Hello', '^h'), regexp_like('Hello', '^h', 'i');
SELECT regexp_substr('1a22b333', '\d+', 1, 3), regexp_substr('abc', 'x'), regexp_substr('a1b2', '([a-z])(\d)', 1, 2, '', 2);
SELECT regexp_replace('Thomas', '.[mN]a.', 'M'), regexp_replace('foobarbaz', 'b(..)', 'X\1Y', 'g');
SELECT regexp_match('a', '(');
SELECT regexp_match('a', 'a', 'g');
SELECT regexp_count('abc', 'b', 0);
SELECT regexp_match(NULL, 'a'), regexp_count('a', NULL);
