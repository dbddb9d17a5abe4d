"""One home's stored state and no policy: paths and the lock, home files, settings, the journal and its index, contacts, authority and the derived caches."""
