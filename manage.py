#!/usr/bin/env python
import sys

from config.cli import main

if __name__ == "__main__":
    sys.exit(main())
