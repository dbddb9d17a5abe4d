"""Bytes to values, with no file system: strict JSON, manifests, keys and signatures, key statements, word-pairs, the vocabulary and the errors."""
