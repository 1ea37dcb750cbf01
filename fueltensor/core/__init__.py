"""The tensor itself: storage, strided layouts, dtypes, and the errors every layer raises."""
