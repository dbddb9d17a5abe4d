"""The journal: an append-only, hash-chained log (log), its lines (lines), the facts folded from it (facts), their derived index (index) and the chain check (verify)."""
