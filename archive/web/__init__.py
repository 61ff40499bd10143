"""The web pages of ``sesh-archive serve``, as plain functions the Datasette plugin calls.

* ``markup``: Markdown (markdown-it-py), sanitising (nh3), code and diff colouring (Pygments).
* ``hosts``: the Host-header check in front of the whole Datasette app.
* ``conversation``: one page of a thread: responses grouped into bubbles, tool calls by kind.
* ``sessions``: the home page's list of sessions, with filters and sorts.
* ``usage``: the usage dashboard, its charts drawn as SVG on the server.
* ``search``: full-text search with filters, a total and two sorts.

Every function here only reads (SELECT) and returns plain values or ``Markup``; the plugin
(``archive.datasette_plugin``) owns routes, permissions and templates.
"""
