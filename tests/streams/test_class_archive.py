"""The embedded session maps the class-data-sharing archive only while it was made for this
pyspark and this JVM (its key); a stale or missing one is never handed to the JVM."""

from __future__ import annotations

from deltastreams.streams._internal.spark import class_archive


def test_the_archive_is_used_only_while_its_key_matches_this_pyspark_and_jvm(tmp_path, monkeypatch):
    archive, key = tmp_path / "spark-classes.jsa", tmp_path / "spark-classes.key"
    monkeypatch.setattr(class_archive, "ARCHIVE", archive)
    monkeypatch.setattr(class_archive, "KEY", key)
    assert class_archive.java_options() == ""  # none written
    archive.write_bytes(b"an archive")
    assert class_archive.java_options() == ""  # no key: made by whom?
    key.write_text("pyspark 0.0.1; /old/jdk/bin/java 1")
    assert class_archive.java_options() == ""  # another pyspark, another JVM
    key.write_text(class_archive.key())
    assert class_archive.java_options() == f"-XX:SharedArchiveFile={archive}"
    assert class_archive.key().startswith("pyspark 4.")  # names the pyspark whose jars are the class path


def test_the_embedded_jvm_gets_the_archive_and_c1_before_the_applications_own_options(tmp_path, monkeypatch):
    from deltastreams.streams._internal.spark.session import QUICK_JIT, driver_java_options

    archive, key = tmp_path / "spark-classes.jsa", tmp_path / "spark-classes.key"
    monkeypatch.setattr(class_archive, "ARCHIVE", archive)
    monkeypatch.setattr(class_archive, "KEY", key)
    assert driver_java_options("") == QUICK_JIT == "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
    archive.write_bytes(b"an archive")
    key.write_text(class_archive.key())
    # the application's flags come last: HotSpot takes a flag's last value, so theirs win
    assert driver_java_options("-XX:TieredStopAtLevel=4") == f"-XX:SharedArchiveFile={archive} {QUICK_JIT} -XX:TieredStopAtLevel=4"


def test_the_test_sessions_jvm_runs_with_c1_only_and_a_full_size_code_cache(spark):
    jvm = spark._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert "-XX:TieredStopAtLevel=1" in arguments
    # C1 alone would reserve 48 MB, which a long-lived JVM of many queries fills (compiling stops)
    hotspot = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    assert int(hotspot.getVMOption("ReservedCodeCacheSize").getValue()) == 240 * 1024 * 1024
