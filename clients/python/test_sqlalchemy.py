"""SQLAlchemy 2 (Core and ORM, over psycopg 3) against `tern serve`: a small library
application with generated keys, foreign keys, indexes, relationships, joins and aggregates,
savepoints, a retried serialization failure, every column type, and `inspect()`."""

import datetime
import decimal
import uuid

import pytest
from sqlalchemy import (
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    Interval,
    LargeBinary,
    Numeric,
    SmallInteger,
    String,
    Text,
    Time,
    UniqueConstraint,
    create_engine,
    delete,
    func,
    inspect,
    select,
    update,
)
from sqlalchemy import Enum as SqlEnum
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "author"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), index=True)
    born: Mapped[datetime.date | None]
    books: Mapped[list["Book"]] = relationship(back_populates="author", cascade="all, delete-orphan")


class Book(Base):
    __tablename__ = "book"
    __table_args__ = (UniqueConstraint("author_id", "title", name="book_author_title"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    price: Mapped[decimal.Decimal] = mapped_column(Numeric(10, 2))
    published: Mapped[datetime.date | None]
    author_id: Mapped[int] = mapped_column(ForeignKey("author.id", ondelete="CASCADE"), index=True)
    author: Mapped[Author] = relationship(back_populates="books")


class Sample(Base):
    """One column of each type SQLAlchemy's PostgreSQL dialect maps."""

    __tablename__ = "sample"
    __table_args__ = {"comment": "one column of each type"}
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    small: Mapped[int | None] = mapped_column(SmallInteger)
    whole: Mapped[int | None] = mapped_column(Integer)
    big: Mapped[int | None] = mapped_column(BigInteger)
    exact: Mapped[decimal.Decimal | None] = mapped_column(Numeric(12, 4))
    real: Mapped[float | None] = mapped_column(Float)
    short: Mapped[str | None] = mapped_column(String(20), comment="at most 20")
    long: Mapped[str | None] = mapped_column(Text)
    flag: Mapped[bool | None] = mapped_column(Boolean)
    day: Mapped[datetime.date | None] = mapped_column(Date)
    moment: Mapped[datetime.datetime | None] = mapped_column(DateTime)
    instant: Mapped[datetime.datetime | None] = mapped_column(DateTime(timezone=True))
    clock: Mapped[datetime.time | None] = mapped_column(Time)
    span: Mapped[datetime.timedelta | None] = mapped_column(Interval)
    raw: Mapped[bytes | None] = mapped_column(LargeBinary)
    mood: Mapped[str | None] = mapped_column(SqlEnum("sad", "ok", "happy", name="mood"))


@pytest.fixture(scope="module")
def engine(server):
    engine = create_engine(server.url("postgresql+psycopg"))
    Base.metadata.create_all(engine)
    yield engine
    engine.dispose()


def test_orm_inserts_with_generated_keys_and_relationships(engine):
    with Session(engine) as session:
        author = Author(
            name="Ursula K. Le Guin",
            born=datetime.date(1929, 10, 21),
            books=[
                Book(title="A Wizard of Earthsea", price=decimal.Decimal("9.99"), published=datetime.date(1968, 1, 1)),
                Book(title="The Lathe of Heaven", price=decimal.Decimal("12.50")),
            ],
        )
        session.add(author)
        session.add(Author(name="Stanisław Lem", books=[Book(title="Solaris", price=decimal.Decimal("11.00"))]))
        session.commit()
        assert author.id is not None
        assert all(book.id is not None and book.author_id == author.id for book in author.books)
        assert len({book.id for book in author.books}) == 2

    with Session(engine) as session:
        loaded = session.scalars(select(Author).where(Author.name.like("Ursula%"))).one()
        assert sorted(book.title for book in loaded.books) == ["A Wizard of Earthsea", "The Lathe of Heaven"]
        assert loaded.born == datetime.date(1929, 10, 21)


def test_joins_and_aggregates(engine):
    with Session(engine) as session:
        rows = session.execute(
            select(Author.name, func.count(Book.id), func.sum(Book.price), func.max(Book.published))
            .join(Book)
            .group_by(Author.name)
            .order_by(func.count(Book.id).desc(), Author.name)
        ).all()
    assert rows[0] == ("Ursula K. Le Guin", 2, decimal.Decimal("22.49"), datetime.date(1968, 1, 1))
    assert rows[1] == ("Stanisław Lem", 1, decimal.Decimal("11.00"), None)


def test_update_delete_and_foreign_keys(engine):
    with Session(engine) as session:
        session.execute(update(Book).where(Book.title == "Solaris").values(price=Book.price * 2))
        assert session.scalar(select(Book.price).where(Book.title == "Solaris")) == decimal.Decimal("22.00")
        # A book whose author does not exist is refused by the foreign key.
        session.add(Book(title="Orphan", price=decimal.Decimal("1"), author_id=999_999))
        with pytest.raises(IntegrityError) as refused:
            session.flush()
        assert refused.value.orig.sqlstate == "23503"
        session.rollback()
        # Deleting an author cascades to the books (ON DELETE CASCADE in the database).
        lem = session.scalars(select(Author).where(Author.name == "Stanisław Lem")).one()
        session.execute(delete(Author).where(Author.id == lem.id))
        session.commit()
        assert session.scalar(select(func.count()).select_from(Book).where(Book.author_id == lem.id)) == 0


def test_unique_violation_and_savepoints(engine):
    with Session(engine) as session:
        author_id = session.scalars(select(Author.id).where(Author.name.like("Ursula%"))).one()
        with pytest.raises(IntegrityError) as duplicate:
            with session.begin_nested():
                session.add(Book(title="A Wizard of Earthsea", price=decimal.Decimal("1"), author_id=author_id))
        assert duplicate.value.orig.sqlstate == "23505"
        # The outer transaction goes on after the savepoint's rollback.
        with session.begin_nested():
            session.add(Book(title="Tehanu", price=decimal.Decimal("8.00"), author_id=author_id))
        session.commit()
    with Session(engine) as session:
        titles = session.scalars(select(Book.title).where(Book.author_id == author_id).order_by(Book.title))
        assert list(titles) == ["A Wizard of Earthsea", "Tehanu", "The Lathe of Heaven"]


def test_serialization_failure_is_retried(engine):
    """Two transactions read and write the same row; the loser gets 40001 and retries."""

    def add_to_price(session, amount):
        price = session.scalar(select(Book.price).where(Book.title == "Tehanu"))
        session.execute(update(Book).where(Book.title == "Tehanu").values(price=price + amount))

    first, second = Session(engine), Session(engine)
    try:
        add_to_price(first, decimal.Decimal("1"))
        add_to_price(second, decimal.Decimal("10"))
        first.commit()
        with pytest.raises(DBAPIError) as conflict:
            second.commit()
        assert conflict.value.orig.sqlstate == "40001"
        second.rollback()
        attempts = 0
        while True:
            attempts += 1
            try:
                add_to_price(second, decimal.Decimal("10"))
                second.commit()
                break
            except DBAPIError as error:
                assert error.orig.sqlstate == "40001" and attempts < 5
                second.rollback()
    finally:
        first.close()
        second.close()
    with Session(engine) as session:
        assert session.scalar(select(Book.price).where(Book.title == "Tehanu")) == decimal.Decimal("19.00")


SAMPLE = dict(
    id=1,
    small=-32768,
    whole=2_147_483_647,
    big=-9_223_372_036_854_775_808,
    exact=decimal.Decimal("-12345678.0125"),
    real=0.1,
    short="naïve ☃",
    long="line\nbreak, 'quotes' and \\backslash",
    flag=True,
    day=datetime.date(2024, 2, 29),
    moment=datetime.datetime(1999, 12, 31, 23, 59, 58, 123456),
    instant=datetime.datetime(2021, 6, 1, 12, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
    clock=datetime.time(8, 15, 30, 250000),
    span=datetime.timedelta(days=3, hours=4, minutes=5, seconds=6),
    raw=bytes(range(256)),
    mood="happy",
)


def test_every_type_round_trips(engine):
    with Session(engine) as session:
        session.add(Sample(**SAMPLE))
        session.add(Sample(id=2))
        session.commit()
    with Session(engine) as session:
        full = session.get(Sample, 1)
        for name, value in SAMPLE.items():
            assert getattr(full, name) == value, name
        empty = session.get(Sample, 2)
        assert all(getattr(empty, name) is None for name in SAMPLE if name != "id")
        # Filtering on each typed value finds the row.
        for name in ("day", "moment", "instant", "flag", "exact", "mood", "span", "clock"):
            assert session.scalar(select(Sample.id).where(getattr(Sample, name) == SAMPLE[name])) == 1, name


def test_inspect_reads_the_schema(engine):
    inspector = inspect(engine)
    assert {"author", "book", "sample"} <= set(inspector.get_table_names())
    columns = {column["name"]: column for column in inspector.get_columns("book")}
    assert list(columns) == ["id", "title", "price", "published", "author_id"]
    assert str(columns["title"]["type"]) == "VARCHAR(200)"
    assert str(columns["price"]["type"]) == "NUMERIC(10, 2)"
    assert columns["title"]["nullable"] is False and columns["published"]["nullable"] is True
    assert "nextval" in (columns["id"]["default"] or "") or columns["id"].get("identity") is not None
    assert inspector.get_pk_constraint("book")["constrained_columns"] == ["id"]
    (foreign_key,) = inspector.get_foreign_keys("book")
    assert foreign_key["referred_table"] == "author"
    assert foreign_key["constrained_columns"] == ["author_id"]
    assert foreign_key["referred_columns"] == ["id"]
    assert foreign_key["options"].get("ondelete") == "CASCADE"
    indexes = {index["name"]: index for index in inspector.get_indexes("book")}
    assert indexes["ix_book_author_id"]["column_names"] == ["author_id"]
    uniques = inspector.get_unique_constraints("book")
    assert [(unique["name"], unique["column_names"]) for unique in uniques] == [
        ("book_author_title", ["author_id", "title"])
    ]
    sample = {column["name"]: column["type"] for column in inspector.get_columns("sample")}
    assert sample["instant"].timezone is True and sample["moment"].timezone is False
    assert isinstance(sample["mood"], postgresql.ENUM) and sample["mood"].enums == ["sad", "ok", "happy"]
    assert isinstance(sample["span"], postgresql.INTERVAL) and isinstance(sample["raw"], postgresql.BYTEA)
    assert isinstance(sample["exact"], Numeric) and (sample["exact"].precision, sample["exact"].scale) == (12, 4)
    assert [enum["labels"] for enum in inspector.get_enums()] == [["sad", "ok", "happy"]]
    assert inspector.has_table("author") and not inspector.has_table("nothing_here")
    # Comments made by create_all (COMMENT ON) read back.
    assert inspector.get_table_comment("sample")["text"] == "one column of each type"
    comments = {column["name"]: column.get("comment") for column in inspector.get_columns("sample")}
    assert comments["short"] == "at most 20" and comments["long"] is None
