"""Spark's own output into a job's log file, so that the terminal keeps the job's lines only.

Spark writes to the JVM's stderr: its log4j log (with the Java and Python stack traces of every
failed task, several times over), banners printed around log4j ("Using Spark's default log4j
profile", "Setting default log level"), the JVM's own warnings, and whatever its Python workers
print to their stderr (PySpark's daemon and workers, our task hosts), which the JVM copies to its
``System.err``. A failed batch put ~500 such lines on the terminal before the three that say what
to do. All of it belongs in the log file, where nothing is lost.

Two cases, by who starts the JVM:
- this process (the embedded default, ``PYSPARK_SUBMIT_ARGS``): the JVM is started with the log
  file as its stderr (:func:`launch_jvm_writing_to`), which catches everything from its first
  line on, whatever log4j configuration it ends up with;
- somebody else (``spark-submit``, whose JVM runs our Python; or an earlier session of this
  process): the JVM's stderr is fixed by then, so log4j's console appenders are replaced by a file
  appender and ``System.err`` (where Python workers' output goes) is pointed at the file
  (:func:`running_jvm_writing_to`). What the JVM printed before our code ran stays where it went.

On a cluster, executors log to their worker directories as Spark configures them; only the
driver's output moves.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("deltastreams.spark")

_APPENDER = "deltastreams-log-file"
"""Name of the file appender this module adds, found again when a later run of the same process
moves the log to its own file."""
_LAYOUT = "%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex"
"""Spark's default console layout, so the lines read the same in either case."""
_CONSOLE = "org.apache.logging.log4j.core.appender.ConsoleAppender"
_system_err_path: str | None = None
"""The file the running JVM's ``System.err`` was pointed at last."""


def launch_jvm_writing_to(log_file: str | Path, settings: dict[str, str]) -> None:
    """Start the JVM (PySpark's gateway, as ``getOrCreate`` would, with the settings it would pass)
    as this process's child with ``log_file`` as its stderr for good. Given to the child alone,
    not by pointing this process's stderr at the file meanwhile: the session may start on a thread
    of its own while the application logs to the terminal
    (:mod:`deltastreams.streams._internal.spark.session_start`)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as into_log:  # the child keeps its own copy of the descriptor
        gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(list(settings.items())), popen_kwargs={"stderr": into_log})
    SparkContext._ensure_initialized(gateway=gateway)


def running_jvm_writing_to(jvm, log_file: str | Path) -> None:
    """Move an already running driver JVM's output to ``log_file``: log4j's console appenders
    (and a previous run's log file) are replaced by the file, ``System.err`` too. A JVM whose
    logging is not log4j 2 keeps its log where it is (logged, not fatal)."""
    global _system_err_path
    path = str(Path(log_file).absolute())
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if _system_err_path != path:  # once per file: each PrintStream holds a file open for good
        jvm.java.lang.System.setErr(jvm.java.io.PrintStream(jvm.java.io.FileOutputStream(path, True), True))
        _system_err_path = path
    try:
        # spark-submit un-initialises Spark's logging before it runs us, and the first Spark class
        # that logs would then load Spark's default log4j profile again, console appender and
        # all: initialise it now (silently), so that the file appender below stays.
        jvm.org.apache.spark.SparkConf(False).initializeLogIfNecessary(False, True)
        _log4j_console_to_file(jvm, path)
    except Exception:  # noqa: BLE001 - another logging backend: its output stays as configured
        log.debug("Spark's log4j output could not be moved to %s", path, exc_info=True)


def _log4j_console_to_file(jvm, path: str) -> None:
    core = jvm.org.apache.logging.log4j.core
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    previous = config.getAppender(_APPENDER)
    loggers = [config.getRootLogger(), *config.getLoggers().values()]
    consoles = [(logger, name) for logger in loggers for name, appender in logger.getAppenders().items() if appender.getClass().getName() == _CONSOLE]
    if previous is not None and previous.getFileName() == path and not consoles:
        return  # done already
    layout = core.layout.PatternLayout.newBuilder().withConfiguration(config).withPattern(_LAYOUT).build()
    into_file = core.appender.FileAppender.newBuilder().setName(_APPENDER).withFileName(path).withAppend(True).setLayout(layout).setConfiguration(config).build()
    into_file.start()
    for logger in loggers:
        appenders = logger.getAppenders()
        moved = [name for name in list(appenders) if name == _APPENDER or appenders[name].getClass().getName() == _CONSOLE]
        for name in moved:
            logger.removeAppender(name)
        if moved:
            logger.addAppender(into_file, None, None)
    config.getAppenders().put(_APPENDER, into_file)
    context.updateLoggers()
    if previous is not None:
        previous.stop()  # a previous run's file, closed (console appenders own no file: left alone)
