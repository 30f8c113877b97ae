"""The kinds of tool output `wirespeed import` reads, one module each; `registry.KINDS` lists them, one line per kind.
Pure, like the rest of core/: text in, the public object (docs/import-format.md) and its summary out."""
