"""The checks: each a pure function over what discovery found, returning one `CheckResult`."""
