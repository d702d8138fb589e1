"""Dated data dumps at /data/ (issue 32): the whole catalog, as anyone may reuse it.

`snapshot.py` writes one snapshot per data version (`manage.py publish_dump`, the daily beat
task `providers.tasks.publish_dump`, and `make run` after it loads the catalog) and prunes those
past the keeping period;
`views.py` lists them and serves their files.
"""
