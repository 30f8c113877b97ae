"""wirespeed: take a small GPU cluster's interconnect from "cabled" to "commissioned"."""

__version__ = "0.1.0"
