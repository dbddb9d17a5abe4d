"""Every derived store of a home, under its `cache/` folder: removing any of them changes nothing but speed
(docs/architecture.md, "The caches")."""
