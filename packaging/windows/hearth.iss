; Inno Setup 6 script: turns the PyInstaller folder dist\Hearth into HearthSetup-<version>.exe,
; a per-user installer (no admin rights) with a Start menu entry, an optional desktop icon and
; an uninstaller. Not built or tested on the Linux dev machine; see packaging/windows/README.md.
;
;   iscc /DAppVersion=0.1.0 packaging\windows\hearth.iss

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif

[Setup]
AppId={{8123C67E-4722-45CC-AE83-824386552451}
AppName=Hearth
AppVersion={#AppVersion}
AppPublisher=Hearth
DefaultDirName={localappdata}\Programs\Hearth
DefaultGroupName=Hearth
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
OutputDir=..\..\dist
OutputBaseFilename=HearthSetup-{#AppVersion}
SetupIconFile=..\..\assets\icons\hearth.ico
UninstallDisplayIcon={app}\Hearth.exe
Compression=lzma2/max
SolidCompression=yes
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
; Hearth is single-instance: ask a running copy to close before files are replaced.
CloseApplications=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"
Name: "chinesesimplified"; MessagesFile: "compiler:Languages\ChineseSimplified.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "..\..\dist\Hearth\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
; AppUserModelID lets the taskbar group the running window with its pinned shortcut.
Name: "{autoprograms}\Hearth"; Filename: "{app}\Hearth.exe"; AppUserModelID: "Hearth.Hearth"
Name: "{autodesktop}\Hearth"; Filename: "{app}\Hearth.exe"; Tasks: desktopicon; AppUserModelID: "Hearth.Hearth"

[Run]
Filename: "{app}\Hearth.exe"; Description: "{cm:LaunchProgram,Hearth}"; Flags: nowait postinstall skipifsilent
