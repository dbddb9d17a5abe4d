"""Acts on a home: opening and reconciling it, importing, the gate, sending and forwarding, the inbox read model."""
