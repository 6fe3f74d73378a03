"""Alembic autogenerate against `tern serve`: a migration's operations applied through
Alembic, then the database compared with the models finds no difference, and a change to
the models is found; a later migration changes a column's nullability, default and comment,
and a downgrade drops it."""

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy import Column, ForeignKey, Index, Integer, MetaData, String, Table, Text, create_engine


def models(with_bio, bio_required=False):
    metadata = MetaData()
    bio = Column("bio", Text, nullable=not bio_required, comment="about them" if bio_required else None)
    Table(
        "writer",
        metadata,
        Column("id", Integer, primary_key=True),
        Column("name", String(80), nullable=False),
        *([bio] if with_bio else []),
    )
    Table(
        "essay",
        metadata,
        Column("id", Integer, primary_key=True),
        Column("writer_id", Integer, ForeignKey("writer.id"), nullable=False),
        Column("title", String(200), nullable=False),
        Index("ix_essay_title", "title"),
    )
    return metadata


def test_autogenerate_sees_the_schema_and_its_changes(server):
    engine = create_engine(server.url("postgresql+psycopg"))
    with engine.begin() as connection:
        operations = Operations(MigrationContext.configure(connection))
        operations.create_table(
            "writer", Column("id", Integer, primary_key=True), Column("name", String(80), nullable=False)
        )
        operations.create_table(
            "essay",
            Column("id", Integer, primary_key=True),
            Column("writer_id", Integer, ForeignKey("writer.id"), nullable=False),
            Column("title", String(200), nullable=False),
        )
        operations.create_index("ix_essay_title", "essay", ["title"])

    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, models(with_bio=False)) == []
        differences = compare_metadata(context, models(with_bio=True))
    assert [(kind, table, column.name) for kind, _, table, column in differences] == [
        ("add_column", "writer", "bio")
    ]

    with engine.begin() as connection:
        Operations(MigrationContext.configure(connection)).add_column("writer", Column("bio", Text))
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), models(with_bio=True)) == []

    # ALTER COLUMN: a default, NOT NULL over the stored rows, a comment.
    with engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO writer (name) VALUES ('ann')")
        operations = Operations(MigrationContext.configure(connection))
        operations.alter_column("writer", "bio", server_default="(none yet)")
        connection.exec_driver_sql("UPDATE writer SET bio = '(none yet)' WHERE bio IS NULL")
        operations.alter_column("writer", "bio", nullable=False, comment="about them")
    with engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert compare_metadata(context, models(with_bio=True, bio_required=True)) == []
        assert {kind for kind, *_ in compare_metadata(context, models(with_bio=True))[0]} == {"modify_nullable", "modify_comment"}
        connection.exec_driver_sql("INSERT INTO writer (name) VALUES ('bo')")
        assert connection.exec_driver_sql("SELECT bio FROM writer WHERE name = 'bo'").scalar() == "(none yet)"

    # A downgrade: the column goes, the rows stay.
    with engine.begin() as connection:
        Operations(MigrationContext.configure(connection)).drop_column("writer", "bio")
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), models(with_bio=False)) == []
        names = connection.exec_driver_sql("SELECT name FROM writer ORDER BY name").scalars().all()
        assert names == ["ann"]  # "bo" was inserted in a connection that rolled back
    engine.dispose()
