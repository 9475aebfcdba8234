export default function SettingsPage() {
  return (
    <section className="page">
      <h1>Settings</h1>
    </section>
  );
}
