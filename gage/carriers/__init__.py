"""Ways bundles move (a drop folder, A2A); each lands through the inbox layer's one import path."""
