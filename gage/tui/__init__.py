"""The Textual interface. It shows what the core computes and calls the core to act;
it decides nothing itself (no verdict, no trust, no move happens in here)."""
