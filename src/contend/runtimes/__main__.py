from .builds import main

raise SystemExit(main())
