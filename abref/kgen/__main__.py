from kgen.cli import main

raise SystemExit(main())
