"""The test suite (a package, so that `tests.*` imports resolve here, not to a dependency that ships a top-level `tests`)."""
