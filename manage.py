#!/usr/bin/env python
import sys

from kindmem.cli import main

if __name__ == "__main__":
    sys.exit(main())
