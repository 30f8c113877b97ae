"""`python -m wirespeed` is the same program as the `wirespeed` console script."""

from wirespeed.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
