"""What a run keeps, and how it reads back: the rung, matrix and tune records, the run record, the fix's
records, the report of a run, comparison, spread, and the strict JSON reading they share. Pure."""
