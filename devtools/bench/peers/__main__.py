import sys

from deltastreams.devtools.bench.peers.run import main

if __name__ == "__main__":
    sys.exit(main())
