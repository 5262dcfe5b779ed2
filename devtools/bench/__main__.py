import sys

from deltastreams.devtools.bench.suite import main

if __name__ == "__main__":
    sys.exit(main())
