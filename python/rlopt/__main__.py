"""`python -m rlopt ARGS` and the `rlopt` console script: the packaged
executable with the same arguments, exit code and output."""

import os
import sys

from . import RloptError, executable


def main():
    try:
        exe = executable()
    except RloptError as e:
        sys.stderr.write(e.message + "\n")
        return 127
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
