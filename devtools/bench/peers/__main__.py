import sys

from deltastreams.devtools.bench.peers.run import main

sys.exit(main())
