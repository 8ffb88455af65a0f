"""The search's candidate statement in positional form (infra/kb_store.py), converted once per shape."""

from __future__ import annotations

import re

from godot_rag.infra.kb_store import TABLES, _candidate_sql, candidate_statement, positional


def test_named_placeholders_become_numbers_one_per_name():
    sql, names = positional("select %(a)s, %(b)s, %(a)s where x like 'a%%' and y = %(c)s")
    assert sql == "select $1, $2, $1 where x like 'a%' and y = $3"
    assert names == ("a", "b", "c")


def test_every_shape_of_the_candidate_statement_keeps_every_parameter_and_no_named_one():
    for tables in (tuple(TABLES), (TABLES[0],)):
        for lexical, vector in ((True, True), (True, False), (False, True)):
            sql, names = candidate_statement(tables, lexical=lexical, vector=vector)
            named = set(re.findall(r"%\((\w+)\)s", _candidate_sql(tables, lexical=lexical, vector=vector)))
            assert set(names) == named and len(names) == len(named)
            assert "%(" not in sql
            numbers = {int(n) for n in re.findall(r"\$(\d+)", sql)}
            assert numbers == set(range(1, len(names) + 1))
    # Made once per shape: the same objects come back.
    assert candidate_statement(tuple(TABLES), lexical=True, vector=True) is candidate_statement(tuple(TABLES), lexical=True, vector=True)
