"""The upstream layout: ``uvicorn server:app --port 23337`` from this folder (see ``server.py``)."""
