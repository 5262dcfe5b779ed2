import sys

from deltastreams.devtools.bench.suite import main

sys.exit(main())
