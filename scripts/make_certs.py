#!/usr/bin/env python3
"""Make a test CA and signer/executor/client certificates (SPIFFE role SANs) in OUTDIR.

Usage: scripts/make_certs.py OUTDIR [--dns NAME ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from patchgate.pki import ROLE_NAMES, issue, make_ca


def main(argv: list[str] | None = None) -> int:
    """Write ca.crt/ca.key and <role>.crt/<role>.key for every role."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--dns", action="append", default=None, help="DNS SAN (default: localhost)")
    args = parser.parse_args(argv)
    dns = args.dns or ["localhost"]
    make_ca(args.outdir)
    for role in ROLE_NAMES:
        paths = issue(args.outdir, role, dns)
        print(f"{role}: {paths.cert} {paths.key}")
    print(f"ca: {args.outdir / 'ca.crt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
