from runtop.cli import main

raise SystemExit(main())
