"""The run view's layout rules (Textual CSS): the columns, the compact layout of a tmux split,
the short screen, zoomed panes and where toasts sit. Each pane's rows come from `tui/fit.py`."""

APP_CSS = """
    Screen { layout: vertical; }
    #top { height: auto; }
    #body { height: 1fr; }
    #left, #metrics { width: 3fr; }
    #right, #alerts { width: 2fr; }
    .-hidden { display: none; }
    MetricSparklines { max-height: 10; }
    AlertsPane { height: 100%; max-height: 10; }
    Screen.-compact #top, Screen.-compact #body { layout: vertical; }
    Screen.-compact #metrics, Screen.-compact #alerts { width: 1fr; }
    Screen.-compact #left, Screen.-compact #right { width: 1fr; height: auto; }
    Screen.-compact .pane { display: none; }
    Screen.-compact .pane.-slot { display: block; height: 1fr; max-height: 100%; }
    Screen.-compact #left.-has-slot, Screen.-compact #right.-has-slot { height: 1fr; }
    Screen.-compact MetricSparklines { max-height: 7; }
    Screen.-compact MetricSparklines.-maximized { max-height: 100%; }
    Screen.-compact #alerts { display: block; height: auto; max-height: 4; }
    Screen.-compact #alerts.-slot { height: 1fr; max-height: 100%; }
    Screen.-compact LogsPane { display: none; }
    Screen.-compact LogsPane.-slot { display: block; height: 1fr; }
    Screen.-compact #body.-empty { display: none; }
    /* A screen under 50 rows (120×40): the logs take 8 rows, and a column whose panes do not
       fit scrolls instead of drawing them over each other's borders. */
    Screen.-short LogsPane { height: 8; }
    /* Each pane of a column is given its rows by tui/fit.py: a column never scrolls (its
       scrollbar sat outside the frame at 120×40) and no pane runs off its bottom. */
    #left, #right { overflow: hidden; }
    /* A zoomed pane (0-9) takes the whole body, whatever its natural height (it
       kept its height in a field of hatching; the logs stayed at 12 rows). */
    .-maximized { height: 1fr; max-height: 100%; }
    /* The top band's panes are sized in fr against each other: alone on the screen, 3fr was
       three screens wide (the zoomed alerts and metrics ran off the right edge). */
    #metrics.-maximized, #alerts.-maximized { width: 100%; }
    LogsPane.-maximized, Screen.-short LogsPane.-maximized { height: 1fr; max-height: 100%; }
    /* In a tmux split, toasts sit at the top right, over the sparklines' ranges: never over
       the logs a researcher reads when one arrives. A full screen keeps them at
       the bottom right, over the ends of long log lines, clear of the alerts pane. */
    Screen.-compact ToastRack { dock: top; align: right top; margin-top: 4; margin-bottom: 0; }
"""
