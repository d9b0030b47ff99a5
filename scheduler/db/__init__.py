"""The SQL side of Gantt: models, sessions, queries, claims and migrations.

Queries are plain functions taking a SQLAlchemy session, grouped by table
(``compute_nodes``, ``services``, ``claims``...). ``api`` owns engines and
transactions.
"""
