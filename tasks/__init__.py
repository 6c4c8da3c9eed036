"""Pipeline steps: typed pure functions, plus thin Prefect task wrappers in ``tasks.prefect_tasks``."""
