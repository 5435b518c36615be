"""`runtop mcp`: the runs to an AI agent over the Model Context Protocol (docs/mcp.md): the
server (`server.py`), the runs it serves (`runs.py`), its tools' answers (`tools.py`, `logs.py`)
and its HTTP door (`http.py`)."""
