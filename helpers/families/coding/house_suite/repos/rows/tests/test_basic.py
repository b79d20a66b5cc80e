from rows import count, read_csv, select, sort_by, total, write_csv

TEXT = "city,people\nOslo,700000\nBergen,\nTromso,77000\n"


def test_read_and_total():
    table = read_csv(TEXT)
    assert table[1] == {"city": "Bergen", "people": None}
    assert total(table, "people") == 777000.0 and count(table, "people") == 2


def test_select_and_sort():
    table = read_csv(TEXT)
    assert [r["city"] for r in sort_by(select(table, ["city"]), "city")] == ["Bergen", "Oslo", "Tromso"]


def test_write_csv():
    assert write_csv(read_csv(TEXT)[:1], ["city", "people"]) == "city,people\nOslo,700000\n"
