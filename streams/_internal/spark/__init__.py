"""Everything that knows Spark: the session, the streaming source over Delta topics, the offset
log, Catalyst steps, the Spark job that runs a trigger's tasks, and the trigger itself."""
