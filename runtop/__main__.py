from runtop.cli.main import main

raise SystemExit(main())
