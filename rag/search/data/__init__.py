"""Data files of the retrieval stage (the common English words of :mod:`rag.search.english`) and the script that builds them."""
